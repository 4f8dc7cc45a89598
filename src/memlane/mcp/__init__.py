"""memlane over the Model Context Protocol: the tools (``tools``), the server (``server``) and client
configuration (``install``). Nothing here is imported on the hook path.
"""
