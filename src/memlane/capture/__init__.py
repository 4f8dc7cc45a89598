"""Capture: turning Claude Code hook payloads and transcripts into stored events."""
