"""The agents under test, named by path in the suites the tests write (``py:tests/agents/basic.py:echo``),
beside the tests of ``farm/agents/``."""
