"""Live views: per-process feeds of the games watched here, and their SSE framing."""
