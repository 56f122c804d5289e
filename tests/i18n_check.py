"""Finding English a Chinese reader would see (docs/pages.md, Language).

Two checks the i18n tests share:

- `template_english(source)`: the English words in a template's own text — text nodes and
  the attributes a person reads (`title`, `aria-label`, `placeholder`, `alt`, a button's
  `value`) — outside `{% translate %}` / `{% blocktranslate %}`, template tags, variables,
  comments, scripts and styles. A template whose text is all marked has none.
- `visible_english(html, data_words)`: the English words a rendered page shows, less the
  page's own data (hostnames, job and cluster names …) passed as `data_words`, and the
  signed-in person's name in the header.

Neither reads literal text — `<code>`, `<kbd>`, `<samp>` (a command, a header, a path) — nor
what a page marks `translate="no"` (the API's operations as Swagger UI draws them: the API
answers in English).

Words that are the same in Chinese (product and vendor names, units, counters, slugs) are
in `SAME_IN_CHINESE`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from html.parser import HTMLParser
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

# Names and abbreviations Chinese SRE teams write as they are; and "English", which the
# header's language switch names in its own words on every page.
SAME_IN_CHINESE = frozenset(
    """
    KUAE Ops API REST JSON CSV PDF PNG ZIP URL UTC GMT ID OK
    GPU GPUs NVIDIA AMD Intel Gaudi Moore Threads MTT MUSA CUDA ROCm NCCL RCCL HCCL DCGM NVLink
    NVSwitch InfiniBand IB RoCE NIC NICs HCA PCI PCIe AER EDAC ECC DBE SBE XID SXid CPU CPUs DIMM
    NVMe NFS Lustre GPFS NTP PTP chrony edac vmstat timex OOM CRC ACK RNR NAK BMC IPMI HBM SRAM
    TFLOPS PFLOPS FLOPS FLOP TFLOP PDU PDUs RDMA
    rank ranks Reporter
    MFU MTBF MTTR MTTD MTTL MTTA MTTF SLA SLO RMA SDC GEMM ISO SM Tensor exporter
    Slurm slurmctld slurmrestd hostlist Prometheus Alertmanager PromQL VictoriaMetrics Grafana
    LDAP OIDC SSO Kubernetes torch PyTorch Lightning Megatron DeepSpeed
    H100 H200 A100 B200 MI300X sev1 sev2 sev3 sev4 CE UE xfs btrfs tmpfs OpenAPI Swagger UI
    ms s min h d GB GiB MB MiB kB KiB TB TiB PiB Gbps GB/s W kW MHz GHz C
    x1 x2 x4 x8 x16 Gen1 Gen2 Gen3 Gen4 Gen5 UUID
    English
    """.split()  # noqa: SIM905 (a list a reader can extend)
)

# A word of letters alone: not part of a name with digits, a path, a dotted name or a
# hostlist (`gpu[01-04]`).
_WORD = re.compile(r"(?<![\w/.-])[A-Za-z][A-Za-z']*[A-Za-z](?![\w/.\[-])")
_WHO = re.compile(r'<a class="whoami"[^>]*><span>([^<]*)</span>')
_READ_ATTRS = frozenset({"title", "aria-label", "placeholder", "alt"})
_DROP = [
    re.compile(r"\{%\s*comment\s*%\}.*?\{%\s*endcomment\s*%\}", re.S),
    re.compile(r"\{#.*?#\}", re.S),
    re.compile(r"<!--.*?-->", re.S),
    re.compile(r"<(script|style)\b.*?</\1>", re.S | re.I),
    re.compile(r"\{%\s*blocktrans(?:late)?\b.*?\{%\s*endblocktrans(?:late)?\s*%\}", re.S),
    re.compile(r"\{%.*?%\}", re.S),
    re.compile(r"\{\{.*?\}\}", re.S),
]


# Elements whose text is never translated: code a person types or reads as it is
# (`<code>Authorization: Token …</code>`, a command, a path).
_LITERAL = frozenset({"code", "kbd", "samp"})
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)


class _Reader(HTMLParser):
    """Collects what a person reads: text (not in script/style) and readable attributes.
    Literal text (`<code>`, `<kbd>`, `<samp>`) and what the page marks as not to be
    translated (`translate="no"`: the API's own operations, drawn by Swagger UI) are not
    read."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self._skip = 0
        self._open: list[str] = []  # the elements open inside a literal one, outermost first

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._open or tag in _LITERAL or dict(attrs).get("translate") == "no":
            if tag not in _VOID:
                self._open.append(tag)
            return
        if tag in ("script", "style", "template"):
            self._skip += 1
        kind = dict(attrs).get("type") or ""
        for name, value in attrs:
            if not value:
                continue
            if name in _READ_ATTRS or (
                name == "value" and tag == "input" and kind in ("submit", "button")
            ):
                self.texts.append(value)

    def handle_endtag(self, tag: str) -> None:
        if self._open:
            if tag in self._open:  # close it and whatever was left open inside it
                del self._open[len(self._open) - 1 - self._open[::-1].index(tag) :]
            return
        if tag in ("script", "style", "template") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip and not self._open:
            self.texts.append(data)


def english_words(texts: Iterable[str], allowed: Iterable[str] = ()) -> list[str]:
    """The English words in `texts`, less `SAME_IN_CHINESE` and `allowed` (in order, once)."""
    skip = SAME_IN_CHINESE | set(allowed)
    found: dict[str, None] = {}
    for text in texts:
        for word in _WORD.findall(text):
            if word not in skip and word.lower() not in skip:
                found.setdefault(word, None)
    return list(found)


def template_english(source: str) -> list[str]:
    """English words in a template's own text, outside translation tags (see the module)."""
    for pattern in _DROP:
        source = pattern.sub(" ", source)
    reader = _Reader()
    reader.feed(source)
    reader.close()
    return english_words(reader.texts)


def visible_english(html: str, data_words: Iterable[str] = ()) -> list[str]:
    """English words a rendered page shows, less `data_words` (the page's own data)."""
    reader = _Reader()
    reader.feed(html)
    reader.close()
    data = set(_WHO.findall(html))  # the signed-in person's name, in the header
    for item in data_words:
        data.update(_WORD.findall(item))
    return english_words(reader.texts, data)
