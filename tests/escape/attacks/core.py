"""A crash that dumps core where the skill may not write: in the working
folder (the project) and in the skill's own folder. argv[1] is unused.
Prints one JSON line, then aborts."""

import json
import os
import resource

for wanted in ((resource.RLIM_INFINITY, resource.RLIM_INFINITY), (resource.getrlimit(resource.RLIMIT_CORE)[1],) * 2):
    try:
        resource.setrlimit(resource.RLIMIT_CORE, wanted)
        break
    except (OSError, ValueError):
        pass
child = os.fork()
if child == 0:
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    os.abort()
os.waitpid(child, 0)
print(json.dumps({"case": "core", "cwd": os.getcwd(), "limit": resource.getrlimit(resource.RLIMIT_CORE)}), flush=True)
os.abort()
