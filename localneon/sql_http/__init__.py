"""SQL over HTTP (``POST /sql``): the protocol of Neon's serverless driver (``endpoint``)."""
