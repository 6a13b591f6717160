"""A distributed sweep in Redis: the store, its plan and delivery halves, its Lua steps, its answers,
every key and TTL, and Redis refusing writes for memory.
"""
