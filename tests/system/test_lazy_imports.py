"""Libraries only some installs need are loaded by their first use, not at start-up: each
would add to the idle memory of every install (bench/startup.py) without doing anything."""

import subprocess
import sys

# module -> what loads it on first use
LOADED_ON_FIRST_USE = {
    "asyncssh": "the first SSH tunnel (27 MB with cryptography's bindings)",
    "aiohttp": "the first webhook delivery or OTLP export",
    "websockets": "the first console socket",
    "google.protobuf": "the first OTLP push received, or the first OTLP export",
}


def test_building_the_app_loads_none_of_the_first_use_libraries():
    probe = (
        "import sys\n"
        "from svc_monitor.app import create_app\n"
        "from svc_monitor.config import Settings\n"
        "create_app(Settings(STORAGE_TYPE='memory', DB_HOST='127.0.0.1'))\n"
        # what the app imports as it starts serving: the feature domains and the UI
        "import svc_monitor.features, svc_monitor.web.ui\n"
        f"print(sorted(m for m in {sorted(LOADED_ON_FIRST_USE)!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.strip().splitlines()[-1]
    assert loaded == "[]", f"loaded at start-up: {loaded}; see {LOADED_ON_FIRST_USE}"
