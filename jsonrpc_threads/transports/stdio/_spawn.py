"""Starting the child: its argv, its environment, and the Popen call.

The child's environment is, by default, only the parent's variables named in
``DEFAULT_ENV_ALLOWLIST``, updated with the caller's ``env``; secrets such
as API keys stay behind unless passed on purpose.  A ``str`` command is split
with ``shlex.split`` (POSIX rules) and never run through a shell.  On
POSIX the child starts in a new session (its own process group), so a Ctrl-C
in the terminal reaches only the parent, which then closes its children in
order, and what the child leaves in its group is still found at ``close()``.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from typing import Dict, List, Mapping, Optional, Sequence, Union

from ...errors import TransportClosed

#: Variables of the parent's environment passed on to the child by default
#: (when ``inherit_env`` is false).  Enough to find programs, a home, the
#: locale, a temporary directory and the time zone, on POSIX and on Windows;
#: secrets such as API keys stay behind unless passed through ``env``.
DEFAULT_ENV_ALLOWLIST = (
    # POSIX
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    # Windows
    "APPDATA",
    "COMSPEC",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "WINDIR",
)

POSIX = os.name == "posix"
_LABEL_MAX_CHARS = 60

Command = Union[str, Sequence[Union[str, "os.PathLike[str]"]]]


def parse_command(command: Command) -> List[str]:
    """The argv of ``command``: a list as given, a ``str`` split by POSIX shell rules.

    Raises:
        ValueError: for an empty command, or a ``str`` with unbalanced quotes.
    """
    argv = shlex.split(command) if isinstance(command, str) else [os.fspath(arg) for arg in command]
    if not argv:
        raise ValueError("command is empty")
    return argv


def child_env(env: Optional[Mapping[str, Optional[str]]], inherit_env: bool) -> Dict[str, str]:
    """The child's environment: the allowlist (or everything) of ours, updated with ``env``.

    Reads ``os.environ`` at each call; thread-safe.  Used for a stdio
    transport's child and for an ACP terminal's command alike.

    Args:
        env: variables to set; a value of ``None`` removes that variable.
        inherit_env: start from this process's whole environment instead of
            the variables named in ``DEFAULT_ENV_ALLOWLIST``.

    Returns:
        A new dict (the caller may change it).
    """
    if inherit_env:
        result = dict(os.environ)
    else:
        result = {}
        for name in DEFAULT_ENV_ALLOWLIST:
            value = os.environ.get(name)
            # "()" starts an exported shell function: never passed on implicitly.
            if value is not None and not value.startswith("()"):
                result[name] = value
    for name, value in (env or {}).items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = value
    return result


def default_label(argv: Sequence[str]) -> str:
    """A short name for logs and thread names: the program's base name and its arguments."""
    label = shlex.join([os.path.basename(argv[0]), *argv[1:]])
    return label if len(label) <= _LABEL_MAX_CHARS else label[: _LABEL_MAX_CHARS - 3] + "..."


def spawn(
    argv: Sequence[str], env: Dict[str, str], cwd: Optional[Union[str, os.PathLike[str]]]
) -> subprocess.Popen[bytes]:
    """Start the child with three pipes, unbuffered, in a session of its own (POSIX).

    Raises:
        TransportClosed: when it cannot start (not found, not executable, bad
            ``cwd``); the message names the command and the OS error.
    """
    executable = argv[0]
    if os.name == "nt":  # find "npx.cmd" for "npx", as a shell would
        import shutil  # noqa: PLC0415 - only here (it loads the archive modules)

        executable = shutil.which(argv[0], path=env.get("PATH")) or argv[0]
    try:
        return subprocess.Popen(
            [executable, *argv[1:]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            env=env,
            cwd=cwd,
            close_fds=True,
            start_new_session=POSIX,
            creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),
        )
    except (OSError, ValueError) as exc:
        raise TransportClosed(f"cannot start {shlex.join(argv)!r}: {exc}") from exc


__all__ = ["DEFAULT_ENV_ALLOWLIST", "child_env", "default_label", "parse_command", "spawn"]
