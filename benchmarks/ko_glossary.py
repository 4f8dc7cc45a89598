"""Build ``src/memlane/retrieval/glossary_ko.tsv``: Korean words of software with their English.

    python benchmarks/ko_glossary.py [--catalogs DIR] [--out PATH] [--show WORD ...]

Reads the Korean gettext catalogs (``*.mo``) in ``--catalogs`` (default: ``/usr/share/locale/ko/LC_MESSAGES``):
each English message with its Korean translation. The shipped file was built from 133 catalogs of Debian 12:
those installed on the build machine (git, postgresql-15, coreutils, GTK, glib, procps, tar, wget, dpkg, apt,
bash, make, iso-codes, …) and those of packages fetched with ``apt-get download`` and unpacked with ``dpkg-deb
-x`` (libreoffice-l10n-ko, gcc-12-locales, vlc-l10n, gimp-data, inkscape, gnucash-common, nautilus-data,
gnome-control-center-data, evolution-common, util-linux-locales, sudo, e2fsprogs-l10n, binutils-common, gdb,
gnome-shell-common, thunar-data, xfce4-settings, transmission-common, filezilla-common, pidgin-data,
gnumeric-common, abiword-common, poedit-common, meld, mousepad, geany-common), their ``ko`` catalogs copied
into one folder: 88,812 message pairs.

A Korean word (its particle and 하다/되다/copula ending stripped, as ``retrieval.glossary`` strips a prompt's)
and an English word (by ``english_key``) that are often in the same pair are taken for translations, by the
Dice coefficient of their counts:

- seen together in 3 pairs at least, Dice ≥ 0.25;
- competitive: the pair's Dice is at least 0.6 of the English word's best with any Korean word (계산 keeps
  "calculate", not "distribution", which is 분포's), unless the Korean word is a synonym: the English word is
  in half its messages and it is in a tenth of the English word's (비밀번호 and 암호 both say "password");
- at most two English words, the second within 0.8 of the first's Dice.

ISO names of one word each (countries, languages: 일본 → Japan) are added as they are. The file is written
sorted, one ``korean<TAB>english,english`` line each, so a rebuild on the same catalogs gives the same bytes.
"""

from __future__ import annotations

import argparse
import collections
import gettext
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from memlane.retrieval.cjk import content_word
from memlane.retrieval.glossary import MIN_SYLLABLES, english_key, stem

OUT = Path(__file__).resolve().parents[1] / "src" / "memlane" / "retrieval" / "glossary_ko.tsv"
HANGUL = re.compile(r"[\uac00-\ud7a3]+")
ENGLISH = re.compile(r"[A-Za-z][a-z]{2,}|[A-Z]{3,}")
FORMAT = re.compile(r"%[-#0-9.*$]*[a-zA-Z]|\\[nt]|[&_]")  # printf directives, escapes, accelerator marks
_EN_STOP = """the and for with that this from are was were has have had not you your can cannot could would should
will into than then there their them they its all any but one use used using also only such may might must been
being which what when where who how why our out more most some other each per via etc does did doing done yes nor
too very"""
EN_STOP = set(_EN_STOP.split())
MIN_TOGETHER = 3
MIN_DICE = 0.25
COMPETITIVE = 0.6
SECOND = 0.8
SYNONYM_WITH = 0.5  # ...or: the English word is in half the Korean word's messages at least,
SYNONYM_OF = 0.1  # and the Korean word in a tenth of the English word's
MAX_ENGLISH_WORDS = 12  # a longer message is a paragraph: its words are not each other's translations


def korean_words(text: str) -> set[str]:
    out = set()
    for run in HANGUL.findall(text):
        word = content_word(run)
        if len(word) >= MIN_SYLLABLES:
            out.add(stem(word))
    return out


def english_words(text: str, forms: dict[str, collections.Counter[str]]) -> set[str]:
    out = set()
    for word in ENGLISH.findall(text):
        lower = word.lower()
        if lower in EN_STOP:
            continue
        key = english_key(lower)
        forms[key][lower] += 1
        out.add(key)
    return out


def pairs(folder: Path) -> tuple[set[tuple[str, str]], dict[str, str]]:
    """Every (English, Korean) message pair of the catalogs, and the one-word ISO names (Korean → English)."""
    found: set[tuple[str, str]] = set()
    names: dict[str, str] = {}
    for file in sorted(folder.glob("*.mo")):
        with file.open("rb") as fh:
            catalog = gettext.GNUTranslations(fh)._catalog  # type: ignore[attr-defined]
        for english, korean in catalog.items():
            if isinstance(english, tuple):
                english = english[0]
            if not english or not korean:
                continue
            english = FORMAT.sub(" ", english.split("\x04")[-1])  # without a msgctxt
            korean = FORMAT.sub(" ", korean)
            found.add((english, korean))
            name, word = english.strip(), korean.strip()
            one_word = re.fullmatch(r"[A-Z][a-z]{2,}", name) and HANGUL.fullmatch(word) and len(word) >= MIN_SYLLABLES
            if file.name.startswith("iso_") and one_word:
                names.setdefault(word, name.lower())
    return found, names


def build(folder: Path) -> dict[str, list[str]]:
    messages, names = pairs(folder)
    forms: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    korean: collections.Counter[str] = collections.Counter()
    english: collections.Counter[str] = collections.Counter()
    together: collections.Counter[tuple[str, str]] = collections.Counter()
    for en_text, ko_text in sorted(messages):
        ko, en = korean_words(ko_text), english_words(en_text, forms)
        if not ko or not en or len(en) > MAX_ENGLISH_WORDS:
            continue
        korean.update(ko)
        english.update(en)
        together.update((k, e) for k in ko for e in en)
    dice = {(k, e): 2 * n / (korean[k] + english[e]) for (k, e), n in together.items() if n >= MIN_TOGETHER}
    best_of_english: dict[str, float] = collections.defaultdict(float)
    for (_, e), d in dice.items():
        best_of_english[e] = max(best_of_english[e], d)
    candidates: dict[str, list[tuple[float, str]]] = collections.defaultdict(list)
    for (k, e), d in dice.items():
        n = together[k, e]
        # A synonym (암호 and 비밀번호 both say password) loses the competition but comes with its word nearly always.
        synonym = n >= SYNONYM_WITH * korean[k] and n >= SYNONYM_OF * english[e]
        if (d >= MIN_DICE and d >= COMPETITIVE * best_of_english[e]) or synonym:
            candidates[k].append((d, e))
    glossary: dict[str, list[str]] = {}
    for k, found in candidates.items():
        found.sort(key=lambda x: (-x[0], x[1]))
        keep = [e for d, e in found[:2] if d >= SECOND * found[0][0]]
        # The English word's most frequent form (shortest, then first in order, when two are as frequent).
        glossary[k] = [min(forms[e].items(), key=lambda f: (-f[1], len(f[0]), f[0]))[0] for e in keep]
    for k, name in names.items():
        glossary.setdefault(k, [name])
    return glossary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--catalogs", type=Path, default=Path("/usr/share/locale/ko/LC_MESSAGES"))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--show", nargs="*", default=[], help="print these words' entries instead of writing")
    args = parser.parse_args()
    if not any(args.catalogs.glob("*.mo")):
        raise SystemExit(f"no Korean catalogs (*.mo) in {args.catalogs}")
    glossary = build(args.catalogs)
    if args.show:
        for word in args.show:
            print(word, glossary.get(word) or glossary.get(stem(content_word(word))))
        return
    header = "# Korean word<TAB>English words: built by benchmarks/ko_glossary.py from Korean gettext catalogs\n"
    body = "".join(f"{k}\t{','.join(v)}\n" for k, v in sorted(glossary.items()))
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(header + body, encoding="utf-8")
    tmp.replace(args.out)
    print(f"{len(glossary)} words → {args.out}")


if __name__ == "__main__":
    main()
