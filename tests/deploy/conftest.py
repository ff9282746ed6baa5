"""Deploy checks: helper modules beside the tests (route scenario, layer pins, harness)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
