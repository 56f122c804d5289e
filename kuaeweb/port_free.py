"""`python -m kuaeweb.port_free PORT [HOST]`: is the port `make run` will serve on free?

`make run` asks before it prints where the dashboard is: with the port taken gunicorn only
loops "Address already in use" while the printed URL shows whatever server holds the port.
Exit 0 when the port is free; else a sentence saying it is taken, and how to choose another
(`PORT=8001 make run`), and exit 1 (2 for a port that is not one)."""

from __future__ import annotations

import errno
import socket
import sys


def port_problem(port: int, host: str = "127.0.0.1") -> str:
    """Why gunicorn could not listen on host:port now; "" when it could. Binds as gunicorn
    does (SO_REUSEADDR: a closed connection lingering in TIME_WAIT does not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is already in use (another server listens there)"
            if exc.errno == errno.EACCES:
                return f"port {port} on {host} needs privileges this user does not have"
            return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return ""


def main(argv: list[str]) -> int:
    """Check the port named on the command line; say what to do when it is taken."""
    if not argv or not argv[0].isdigit() or not 0 < int(argv[0]) < 65536:
        print(
            f"PORT must be a port number (1–65535), not {argv[0] if argv else 'nothing'!r}.",
            file=sys.stderr,
        )
        return 2
    port, host = int(argv[0]), argv[1] if len(argv) > 1 else "127.0.0.1"
    problem = port_problem(port, host)
    if problem:
        other = 8001 if port != 8001 else 8002
        print(
            f"KUAE Ops cannot start: {problem}. Stop that server, or choose another port: "
            f"PORT={other} make run",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
