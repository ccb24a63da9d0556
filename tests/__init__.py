"""The test session's processes count their metrics in a directory of its own
(prometheus_client's multiprocess mode, see webapp/metrics), set before any
test module imports the app; subprocesses the tests start inherit it."""

import atexit
import os
import shutil
import tempfile

if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
    _dir = tempfile.mkdtemp(prefix="test-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = _dir
    atexit.register(shutil.rmtree, _dir, True)
