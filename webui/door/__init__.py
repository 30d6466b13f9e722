"""The server's door: waitress and its loop (serve), the request gate that reads and classes every request before a worker takes it (gate, workclass), and per-client turns (turns)."""
