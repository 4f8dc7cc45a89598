"""The ``memlane`` command line (click + rich). Never imported by hooks."""
