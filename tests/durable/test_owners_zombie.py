"""A worker SIGKILLed and not yet reaped by its parent is a zombie: kill(pid, 0) still succeeds,
but it runs nothing, so its runs are free to take over at once (it was taken for alive, and a
test's killed workers held their runs until reaped: the park kill test took 4x as long)."""

import os
import signal
import socket
import subprocess
import sys
import time

from engine.durable.owners import alive_here, pid_gone


def test_a_killed_unreaped_process_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    owner = f"{socket.gethostname()}-{child.pid}-x"
    try:
        assert alive_here(owner, time.time()) and not pid_gone(owner)
        os.kill(child.pid, signal.SIGKILL)
        end = time.monotonic() + 10
        while alive_here(owner, time.time()) and time.monotonic() < end:
            time.sleep(0.01)  # not reaped: a zombie from the moment the kernel ends it
        assert not alive_here(owner, time.time())
        assert pid_gone(owner)
    finally:
        child.kill()
        child.wait()
