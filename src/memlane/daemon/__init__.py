"""The memlane daemon: one per user, on loopback, token-authenticated; embedding worker + search API."""
