"""A real OpenLDAP server for the LDAP sign-in tests (docs/sign-in.md): Debian's slapd in a
folder of its own, on a free loopback port, with an mdb database under `dc=example,dc=com`,
people with passwords in `ou=people`, groupOfNames groups in `ou=groups` (the memberof
overlay keeps each person's `memberOf`, as Active Directory does) and a service account
KUAE binds as. Changes go through ldapmodify, as a directory's admin would make them.
Absent slapd skips the test with a reason, except under CI (`.ci/run` installs it)."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from tests.binaries import debian_binary, stop, until
from tests.support import closed_port

SUFFIX = "dc=example,dc=com"
ROOT_DN = f"cn=admin,{SUFFIX}"
ROOT_PW = "root-secret"
SERVICE_DN = f"cn=kuae,ou=services,{SUFFIX}"
SERVICE_PW = "service-secret"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
SCHEMAS = ("core", "cosine", "inetorgperson")

CONFIG = """\
{includes}
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload memberof
pidfile {base}/slapd.pid
access to attrs=userPassword by self write by anonymous auth by * none
access to * by * read
database mdb
maxsize 16777216
suffix "{suffix}"
rootdn "{root_dn}"
rootpw {root_pw}
directory {base}/db
overlay memberof
"""


def group_dn(name: str) -> str:
    """The DN of group `name`."""
    return f"cn={name},{GROUPS}"


def person_dn(uid: str) -> str:
    """The DN of person `uid`."""
    return f"uid={uid},{PEOPLE}"


def _person(uid: str, password: str) -> str:
    return (
        f"dn: {person_dn(uid)}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid.title()}\n"
        f"sn: {uid.title()}\ngivenName: {uid.title()}\nmail: {uid}@example.com\n"
        f"userPassword: {password}\n"
    )


def _group(name: str, members: list[str]) -> str:
    dns = [SERVICE_DN, *(person_dn(uid) for uid in members)]
    lines = "".join(f"member: {dn}\n" for dn in dns)
    return f"dn: {group_dn(name)}\nobjectClass: groupOfNames\ncn: {name}\n{lines}"


class Slapd:
    """slapd serving `people` ({uid: password}) and `groups` ({name: [uid, …]}; each also lists
    the service account, since a groupOfNames is never empty) on `url` until `stop()`."""

    def __init__(self, base: Path, people: dict[str, str], groups: dict[str, list[str]]) -> None:
        self.binary = debian_binary("slapd", "/usr/sbin/slapd", package="slapd")
        for tool in ("ldapadd", "ldapmodify"):  # what `ldap()` runs
            debian_binary(tool, package="ldap-utils")
        self.base = base
        (base / "db").mkdir(parents=True, exist_ok=True)
        includes = "\n".join(f"include /etc/ldap/schema/{name}.schema" for name in SCHEMAS)
        self.conf = base / "slapd.conf"
        self.conf.write_text(
            CONFIG.format(
                includes=includes, base=base, suffix=SUFFIX, root_dn=ROOT_DN, root_pw=ROOT_PW
            )
        )
        self.port = closed_port()
        self.url = f"ldap://127.0.0.1:{self.port}"
        self.log = base / "slapd.log"
        self.process: subprocess.Popen | None = None
        self.start()
        entries = [
            f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\n"
            "o: Example\n",
            *(
                f"dn: ou={ou},{SUFFIX}\nobjectClass: organizationalUnit\nou: {ou}\n"
                for ou in ("people", "groups", "services")
            ),
            f"dn: {SERVICE_DN}\nobjectClass: person\ncn: kuae\nsn: kuae\n"
            f"userPassword: {SERVICE_PW}\n",
            *(_person(uid, password) for uid, password in people.items()),
            *(_group(name, members) for name, members in groups.items()),
        ]
        try:
            self.ldap("ldapadd", "\n".join(entries))
        except BaseException:
            self.stop()  # the test never gets it to stop
            raise

    def start(self) -> None:
        """Start (or start again, on the same port and data) and wait until it answers."""
        with self.log.open("ab") as out:
            # -d 0: in the foreground, so the test owns the process and stops it.
            self.process = subprocess.Popen(
                [self.binary, "-f", str(self.conf), "-h", f"{self.url}/", "-d", "0"],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        until(self._answers, "slapd to listen", [self.log])

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"slapd exited {self.process.returncode}: {self.log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def ldap(self, tool: str, ldif: str) -> None:
        """Run `tool` (ldapadd, ldapmodify) as the directory's admin with `ldif`."""
        done = subprocess.run(
            [tool, "-x", "-H", self.url, "-D", ROOT_DN, "-w", ROOT_PW],
            input=ldif,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(f"{tool} failed ({done.returncode}): {done.stderr}\n{ldif}")

    def move(self, uid: str, from_group: str, to_group: str) -> None:
        """Take `uid` out of `from_group` and put them in `to_group` (ldapmodify)."""
        self.ldap(
            "ldapmodify",
            f"dn: {group_dn(from_group)}\nchangetype: modify\ndelete: member\n"
            f"member: {person_dn(uid)}\n\n"
            f"dn: {group_dn(to_group)}\nchangetype: modify\nadd: member\n"
            f"member: {person_dn(uid)}\n",
        )

    def stop(self) -> None:
        """Stop it (the data stay, for `start()`)."""
        if self.process is not None:
            stop(self.process)
            self.process = None
