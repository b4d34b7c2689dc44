# SPDX-License-Identifier: Apache-2.0
# CRIU as the checkpoint benches' reference: checkpoints the bench target with
# `criu dump` and restores it with `criu restore -d`, its stdin, stdout and
# stderr handed back as new pipes (--inherit-fd), so that the restored
# process answers the same commands a cxlpool clone does.
import ctypes
import json
import os
import re
import shutil
import subprocess
import time

_PR_SET_CHILD_SUBREAPER = 36


def _error_lines(text):
    lines = [re.sub(r"^Error \([^)]*\): ", "", l) for l in text.splitlines() if l.startswith("Error")]
    return [l for l in lines if not l.startswith("exited, status")]


def _pipe_inode(pid, fd):
    m = re.fullmatch(r"pipe:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
    return m.group(1) if m else None


class _Clone:
    """A restored process's ends of its three pipes, as Popen offers them."""

    def __init__(self, stdin, stdout, stderr):
        self.stdin = os.fdopen(stdin, "w", buffering=1)
        self.stdout = os.fdopen(stdout, "r")
        self.stderr = os.fdopen(stderr, "r")

    def close(self):
        for f in (self.stdin, self.stdout, self.stderr):
            try:
                f.close()
            except OSError:
                pass


class Criu:
    def __init__(self, target):
        self.target = target
        self.criu = shutil.which("criu")
        self.why_not = self._check()

    def _check(self):
        if self.criu is None:
            return "criu is not installed (apt-get install criu)"
        r = subprocess.run([self.criu, "check"], capture_output=True, text=True)
        if r.returncode != 0:
            errors = _error_lines(r.stdout + r.stderr)
            return (f"`criu check` fails on kernel {os.uname().release}: " + "; ".join(errors[:3] or ["no reason given"]))
        # A restored tree is reparented to us, so its pid is free again once it exits.
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return "cannot become a child subreaper for CRIU's restored processes"
        return None

    def _log_tail(self, images, name):
        try:
            with open(os.path.join(images, name)) as f:
                errors = _error_lines(f.read())
        except OSError:
            errors = []
        return "; ".join(errors[-2:]) or f"see {images}/{name}"

    def run(self, mib, talk):
        """Checkpoints a MIB target with CRIU, restores it once, runs
        talk(clone, ...) on it: {'latency_ms' (CRIU's own restore_time),
        'wall_ms' (the `criu restore -d` command), 'dump_ms', talk's fields},
        or {'error': why}."""
        images = f"/dev/shm/cxlpool-criu-bench-{mib}"
        shutil.rmtree(images, ignore_errors=True)
        os.makedirs(images)
        try:
            return self._run(mib, images, talk)
        finally:
            shutil.rmtree(images, ignore_errors=True)

    def _run(self, mib, images, talk):
        # Its own session: CRIU restores a session whose leader it dumped.
        t = subprocess.Popen([self.target, str(mib)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True, close_fds=True, text=True, bufsize=1)
        if t.stdout.readline().strip() != "checkpoint":
            t.kill()
            return {"error": "the target did not start"}
        inodes = [_pipe_inode(t.pid, fd) for fd in (0, 1, 2)]
        start = time.monotonic()
        d = subprocess.run([self.criu, "dump", "-t", str(t.pid), "-D", images, "-o", "dump.log"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dump_ms = (time.monotonic() - start) * 1e3
        if d.returncode != 0:
            t.kill()
            t.wait()
            return {"error": "criu dump: " + self._log_tail(images, "dump.log")}
        t.wait()
        for f in (t.stdin, t.stdout, t.stderr):
            f.close()
        ends = [os.pipe() for _ in range(3)]  # (read, write) each
        theirs = (ends[0][0], ends[1][1], ends[2][1])  # stdin's read end, stdout's and stderr's write ends
        argv = [self.criu, "restore", "-D", images, "-d", "-o", "restore.log"]
        for fd, inode in zip(theirs, inodes):
            argv += ["--inherit-fd", f"fd[{fd}]:pipe:[{inode}]"]
        start = time.monotonic()
        r = subprocess.run(argv, pass_fds=theirs, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall_ms = (time.monotonic() - start) * 1e3
        for fd in theirs:
            os.close(fd)
        clone = _Clone(ends[0][1], ends[1][0], ends[2][0])
        if r.returncode != 0:
            clone.close()
            return {"error": "criu restore: " + self._log_tail(images, "restore.log")}
        restore_ms = self._restore_time_ms(images)
        res = {"latency_ms": restore_ms, "wall_ms": wall_ms, "dump_ms": dump_ms}
        if restore_ms is None:
            res = {"error": "no restore_time in CRIU's stats-restore (`crit decode` failed)"}
        try:
            if "error" not in res:
                talk(clone, res)
            else:
                clone.stdin.write("quit\n")
            clone.stdout.read()  # to its exit
        finally:
            clone.close()
            try:
                os.waitpid(t.pid, 0)
            except ChildProcessError:
                pass
        return res

    @staticmethod
    def _restore_time_ms(images):
        """CRIU's own restore time (its stats-restore image, through crit), or None."""
        crit = shutil.which("crit")
        if crit is None:
            return None
        r = subprocess.run([crit, "decode", "-i", os.path.join(images, "stats-restore")], capture_output=True, text=True)
        try:
            return json.loads(r.stdout)["entries"][0]["restore"]["restore_time"] / 1e3
        except (ValueError, KeyError, IndexError):
            return None
