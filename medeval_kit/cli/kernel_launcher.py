"""Stand-in kernel process: asks the warm process (:mod:`medeval_kit.cli.warm_kernels`) for a forked kernel.

Run by jupyter_client in place of ``python -m ipykernel_launcher -f CONN`` as::

    python -I -S kernel_launcher.py SOCKET WAIT python ... -m ipykernel_launcher -f CONN

Standard library only (it starts in ~20 ms). It sends the kernel command, its working folder, its environment and
its stdin/stdout/stderr to the warm process, which forks a kernel from a process that already imported ipykernel,
numpy, pandas, scipy, matplotlib and the toolkit. This process then stands for the kernel: the signals the kernel
manager sends (interrupt, terminate) are forwarded to it, and it exits when the kernel exits, with its exit
status. When it is killed, the warm process sees the socket close and kills the kernel.

When there is no warm process, it is still importing after WAIT seconds, or it declines (another interpreter or environment), the
command is executed as it is: a normal, cold kernel start.
"""

import json
import os
import signal
import socket
import struct
import sys
import time

FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def _cold(cmd, base=None, why=""):
    if base and why:  # counted in the run's summary (the warm process counts the starts it declines itself)
        try:
            fd = os.open(base + ".cold", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.write(fd, (why + "\n").encode())
            os.close(fd)
        except OSError:
            pass
    os.execv(cmd[0], cmd)


def _line(sock, buf):
    while b"\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            return None, buf
        buf += chunk
    line, _, rest = buf.partition(b"\n")
    return line.decode(), rest


def main(argv):
    path, wait, cmd = argv[0], float(argv[1]), argv[2:]
    base = os.path.splitext(path)[0]
    end = time.monotonic() + wait  # a warm process still importing is ready in a few seconds: worth waiting for
    while not os.path.exists(base + ".ready") and os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.02)
    if not os.path.exists(base + ".ready"):
        _cold(cmd, base if os.path.exists(path) else None, "the warm process was still importing")
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(120)  # the warm process answers once its imports are done (a few seconds)
        sock.connect(path)
        body = json.dumps({"argv": cmd, "cwd": os.getcwd(), "env": dict(os.environ), "launcher": os.getpid()}).encode()
        socket.send_fds(sock, [struct.pack("!Q", len(body))], [0, 1, 2])
        sock.sendall(body)
        reply, buf = _line(sock, b"")
    except OSError:
        reply = None
    if not reply:
        _cold(cmd, base, "the warm process did not answer")
    if not reply.startswith("pid "):  # declined: counted by the warm process
        _cold(cmd)
    child = int(reply.split()[1])

    def forward(signum, frame):
        try:
            os.kill(child, signum)
        except OSError:
            pass

    for name in FORWARDED:
        signal.signal(getattr(signal, name), forward)
    sock.settimeout(None)
    try:
        status, buf = _line(sock, buf)
    except OSError:
        status = None
    if status is None:  # the warm process is gone: the kernel must not outlive its stand-in
        try:
            os.kill(child, signal.SIGKILL)
        except OSError:
            pass
        sys.exit(1)
    code = int(status.split()[1])
    if code < 0:  # the kernel died of a signal: so does its stand-in
        sig = -code
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
