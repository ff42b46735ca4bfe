"""The MCP face: the server (``server``), its tools (``tools/``), their words (``descriptions``, read
from ``localneon/descriptions/``), session grants (``grants``), and tool surfaces worn and compared
(``surface``, ``snapshot``)."""
