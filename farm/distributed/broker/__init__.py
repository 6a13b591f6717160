"""The broker: Celery's settings, kombu's Redis transport, and queue lengths."""
