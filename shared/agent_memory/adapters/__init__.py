"""Adapters: implementations of the ports in ``agent_memory.ports`` for each technology."""
