"""The sandbox that runs untrusted Python: agents' answers and imported references (`pool`), its
worker process and the template that forks each answer's child (`worker`), and the plain data that
crosses its boundary (`plaindata`).

Nothing is imported here: the worker process imports this package, and loads nothing but the
standard library and `plaindata`."""
