# SPDX-License-Identifier: GPL-3.0-or-later
"""`attnscope-cli` commands through one `attnscope-cli batch` process per script.

Every attnscope-cli process spends ~0.7 s loading LibTorch before it does anything; the reference
scripts run hundreds of commands, so each script keeps one batch process and sends it one command
per line. `cli_run` is a drop-in for `subprocess.run([cli, ...], capture_output=True)`: the same
exit code and output (batch answers with what the command would have printed on its own). Calls
that need their own environment or working folder, or arguments that are not UTF-8, still start
a process of their own. ATTNSCOPE_TEST_NO_BATCH=1 starts one for every call.
"""
import atexit
import json
import os
import subprocess

_sessions = {}


def _session(cli):
    proc = _sessions.get(cli)
    if proc is None or proc.poll() is not None:
        proc = subprocess.Popen([cli, "batch", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True, encoding="utf-8")
        _sessions[cli] = proc
    return proc


def _close_all():
    for proc in _sessions.values():
        if proc.poll() is None:
            proc.stdin.close()
            proc.wait()


atexit.register(_close_all)


def _utf8(words):
    try:
        for w in words:
            w.encode("utf-8")
        return True
    except UnicodeEncodeError:  # a surrogate-escaped byte: JSON cannot carry it
        return False


def cli_run(argv, text=True, env=None, cwd=None, timeout=None):
    """argv[0] is the attnscope-cli executable; returns a subprocess.CompletedProcess."""
    argv = [str(a) for a in argv]
    if env is not None or cwd is not None or os.environ.get("ATTNSCOPE_TEST_NO_BATCH") or \
            not _utf8(argv[1:]):
        return subprocess.run(argv, capture_output=True, text=text, env=env, cwd=cwd,
                              timeout=timeout)
    proc = _session(argv[0])
    proc.stdin.write(json.dumps(argv[1:]) + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:  # the batch process died (a crash): the command failed
        _sessions.pop(argv[0], None)
        err = "attnscope-cli batch ended with code %s during this command" % proc.wait()
        return subprocess.CompletedProcess(argv, -1, "" if text else b"",
                                           err if text else err.encode())
    answer = json.loads(line)
    out, err = answer["stdout"], answer["stderr"]
    if not text:
        out, err = out.encode("utf-8"), err.encode("utf-8")
    return subprocess.CompletedProcess(argv, answer["rc"], out, err)
