"""The distributed farm's settings and keys: Celery config from the environment, Redis key names,
the submitter's refusals, and that the in-process farm never loads Celery or Redis."""

from __future__ import annotations

import subprocess
import sys

import pytest

from farm.distributed.store import keys
from farm.errors import SettingsError
from farm.settings import DEFAULT_RESULT_TTL_S, FarmSettings, safe_url, whole_number_env
from tests.support.servers import ROOT
from workers.config import celery_settings, parse_cron, transport_options, visibility_timeout


def test_celery_settings_are_json_only_acks_late_and_from_env():
    conf = celery_settings(env={"FARM_BROKER_URL": "redis://b:6379/1", "FARM_VISIBILITY_TIMEOUT": "90",
                                "FARM_QUEUE": "q"})
    assert conf["broker_url"] == conf["result_backend"] == "redis://b:6379/1"
    assert conf["accept_content"] == ["json"] and conf["task_serializer"] == conf["result_serializer"] == "json"
    assert conf["task_acks_late"] and conf["task_reject_on_worker_lost"]
    assert conf["worker_prefetch_multiplier"] == 1
    assert conf["broker_transport_options"]["visibility_timeout"] == 90
    assert conf["task_default_queue"] == "q"
    # Task events and STARTED cost the worker CPU per run: off unless asked for (Flower, --events).
    assert not (conf["worker_send_task_events"] or conf["task_send_sent_event"] or conf["task_track_started"])
    watched = celery_settings(env={"FARM_TASK_EVENTS": "1"})
    assert watched["worker_send_task_events"] and watched["task_send_sent_event"]
    assert conf["result_expires"] == DEFAULT_RESULT_TTL_S
    assert celery_settings("redis://x/0", env={"FARM_RESULT_BACKEND": "redis://y/2"})["result_backend"] == "redis://y/2"


def test_visibility_timeout_defaults_to_case_timeout_plus_a_minute():
    assert visibility_timeout({}) == 360
    # a short window means the dead worker's runs are looked for often
    assert transport_options(4)["unacked_restore_interval"] == 1
    assert transport_options(3600)["unacked_restore_interval"] == 10
    with pytest.raises(SettingsError, match="FARM_VISIBILITY_TIMEOUT='soon'"):
        visibility_timeout({"FARM_VISIBILITY_TIMEOUT": "soon"})


def test_settings_resolve_once_from_defaults_env_and_flags():
    assert FarmSettings.from_env({}).queue == "farm"
    settings = FarmSettings.from_env({"FARM_RESULT_TTL": "60", "FARM_QUEUE": "nightly"}, queue="ci")
    assert settings.result_ttl_s == 60 and settings.queue == "ci"  # the flag wins over the environment
    assert settings.replace(queue=None).queue == "ci"  # None: flag not given
    with pytest.raises(SettingsError, match="FARM_RESULT_TTL='0': must be positive"):
        FarmSettings.from_env({"FARM_RESULT_TTL": "0"})


def test_cron_needs_five_fields():
    assert parse_cron("30 3 * * 1-5").hour == {3}
    with pytest.raises(SettingsError, match="expected 5 fields"):
        parse_cron("@daily")
    with pytest.raises(SettingsError, match="FARM_NIGHTLY_CRON"):
        parse_cron("99 3 * * *")


def test_keys_live_under_the_sweep():
    assert keys.run_key("s", "case-1", 3) == "farm:sweep:s:run:case-1:3"
    assert keys.stream_key("s") == "farm:sweep:s:events"
    assert all(k.startswith("farm:sweep:s") for k in keys.sweep_keys("s"))
    assert len(set(keys.sweep_keys("s"))) == len(keys.sweep_keys("s"))


def test_store_url_and_safe_url():
    def store(**env: str) -> str:
        return FarmSettings.from_env(env).store_url

    assert store(FARM_BROKER_URL="redis://b/0", FARM_RESULT_BACKEND="redis://r/1") == "redis://r/1"
    assert store(FARM_BROKER_URL="redis://b/0", FARM_RESULT_BACKEND="db+postgresql://x") == "redis://b/0"
    assert store(FARM_BROKER_URL="amqp://g@h//", FARM_STORE_URL="redis://s/3") == "redis://s/3"
    with pytest.raises(SettingsError, match="set FARM_STORE_URL"):
        store(FARM_BROKER_URL="amqp://guest:pw@h//")
    assert safe_url("redis://:s3cret@host:6379/0") == "redis://:***@host:6379/0"
    assert safe_url("redis://user:s3cret@host/0") == "redis://user:***@host/0"
    assert safe_url("redis://host/0") == "redis://host/0"
    # a password holding an unencoded / ? # is masked whole, and registered as a secret
    assert safe_url("redis://:pa/ss@h:6379/0") == "redis://:***@h:6379/0"
    assert safe_url("http://user:p?w#x@host/path") == "http://user:***@host/path"
    # an @ past a plain host:port is a path's or a query's, not credentials
    assert safe_url("http://127.0.0.1:8002/agent?e=a@b.c") == "http://127.0.0.1:8002/agent?e=a@b.c"
    from farm.agents.secrets import redact, register_url_password

    register_url_password("redis://:pa/ss-long-enough@h:6379/0")
    assert redact("got pa/ss-long-enough back") == "got *** back"


def test_plan_round_trips_through_json_header_and_cases_apart(tmp_path):
    from farm.agents.options import AgentOptions
    from farm.agents.resolve import AgentRef
    from farm.models import Case, Message, Turn
    from farm.plan.sweep_plan import PlannedCase, SweepPlan, build_plan
    from farm.run.environment import RunEnvironment
    from farm.stats import CasePlan

    case = PlannedCase(case=Case(id="c", format="yao", turns=[Turn(messages=[Message(content="hi")])]),
                       plan=CasePlan(runs=3, required=2), agent=AgentRef("python", "m:f", str(tmp_path)))
    assert PlannedCase.model_validate_json(case.model_dump_json()) == case
    plan = build_plan("s", [case], env=RunEnvironment(timeout_s=5, sweep_id="s"),
                      options=AgentOptions.from_env(tmp_path), metadata={"min_pass_rate": 0.5})
    assert (plan.total_runs, plan.runs_per_case, plan.max_case_timeout_s, plan.agent_label) == (3, 3, 5.0, "py:m:f")
    header = SweepPlan.model_validate_json(plan.model_dump_json())
    assert header.cases == [] and header == plan.model_copy(update={"cases": []})


def test_a_rabbitmq_broker_needs_a_redis_store_and_gets_no_redis_transport_options():
    from farm.distributed.submit import CeleryExecutor

    with pytest.raises(SettingsError, match="set FARM_STORE_URL"):
        CeleryExecutor(FarmSettings.from_env({}, broker_url="amqp://guest@localhost//"))
    conf = celery_settings(env={"FARM_BROKER_URL": "amqp://g:pw@rabbit:5672/farm", "FARM_STORE_URL": "redis://s/3"})
    assert conf["broker_url"] == "amqp://g:pw@rabbit:5672/farm"
    assert conf["result_backend"] == "redis://s/3"  # Celery 5 has no AMQP result backend: the store
    assert conf["broker_transport_options"] == {}  # RabbitMQ redelivers on a lost connection, no window
    tls = "rediss://s:6380/0?ssl_cert_reqs=required&ssl_ca_certs=/etc/farm/ca.pem"
    executor = CeleryExecutor(FarmSettings.from_env({"FARM_STORE_URL": tls}, broker_url="amqp://g@h//"))
    assert executor.store_url == tls
    with pytest.raises(SettingsError, match=r"add \?ssl_cert_reqs=required&ssl_ca_certs="):
        FarmSettings.from_env({"FARM_BROKER_URL": "rediss://:pw@s:6380/0"})
    with pytest.raises(SettingsError, match="expected redis://, rediss://, unix:// or amqp://"):
        FarmSettings.from_env({"FARM_BROKER_URL": "sqs://key:secret@"})
    with pytest.raises(SettingsError, match="the farm's store is Redis"):
        FarmSettings.from_env({"FARM_BROKER_URL": "amqp://g@h//", "FARM_STORE_URL": "amqp://g@h//"})


def test_in_process_farm_never_loads_celery_or_redis():
    code = ("import sys, farm.cli, farm.sweep.local, farm.api; "
            "bad = [m for m in ('celery', 'redis', 'kombu', 'workers') if m in sys.modules]; "
            "assert not bad, bad")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_whole_number_env_reads_a_count_of_at_least_one() -> None:
    """The one reader of FARM_LOAD_PROCESSES and FARM_RETRY_ATTEMPTS."""
    assert whole_number_env("N", counting="things", env={}) is None
    assert whole_number_env("N", counting="things", env={"N": " "}) is None
    assert whole_number_env("N", counting="things", env={"N": " 3 "}) == 3
    for bad in ("0", "-2", "1.5", "many"):
        with pytest.raises(SettingsError, match=f"N={bad!r}: expected a whole number of things, at least 1"):
            whole_number_env("N", counting="things", env={"N": bad})
