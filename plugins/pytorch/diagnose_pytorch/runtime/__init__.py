"""One model run in this process: the script run as __main__ with torch.compile redirected, the
session that owns the dump writers and status.json, the compiled callable's boundary, the warm parent."""
