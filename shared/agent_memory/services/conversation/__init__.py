"""Conversation: chat, sessions and threads."""
