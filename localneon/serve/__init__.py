"""Running the server: the command line (``cli``) and the one ASGI app joining every face (``app``)."""
