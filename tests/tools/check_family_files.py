#!/usr/bin/env python3
"""DESIGN.md's promise that an architecture family is two files, held by the source: its file
core/arch/family_<name>.cpp and its line in core/arch/family_list.def. Every `Family::X` of a family in the
list is looked for in core/, analysis/, trainer/ and app/; one outside the family's own file fails, naming
the file and line (code that branches on a family belongs in its traits, core/arch/family.hpp).

Two values are named elsewhere by design: Llama, the default of a view whose family is not known yet and
the layout `export-hf` writes, and ShareLens, ShareLens's own checkpoints, which the run, export and
compression code read apart from every Hugging Face family.

Usage: check_family_files.py [REPO_ROOT]   (exit 0: each family stays in its file; 1: the list of uses)
"""
import pathlib
import re
import sys

NAMED_ELSEWHERE = {"Llama", "ShareLens"}
SOURCES = ("*.cpp", "*.hpp", "*.cu", "*.def")


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    listed = re.findall(r"^SHARELENS_FAMILY\((\w+),", (root / "core/arch/family_list.def").read_text(), re.M)
    if not listed:
        print("core/arch/family_list.def lists no family (SHARELENS_FAMILY(Enum, adapter) lines)")
        return 1
    use = re.compile(r"\bFamily::(" + "|".join(listed) + r")\b")
    problems, families = [], [f for f in listed if f not in NAMED_ELSEWHERE]
    for top in ("core", "analysis", "trainer", "app"):
        for pattern in SOURCES:
            for file in sorted((root / top).rglob(pattern)):
                rel = file.relative_to(root).as_posix()
                for number, line in enumerate(file.read_text(errors="replace").splitlines(), 1):
                    code = line.split("//")[0]
                    for m in use.finditer(code):
                        family = m.group(1)
                        if family in NAMED_ELSEWHERE or rel == f"core/arch/family_{family.lower()}.cpp":
                            continue
                        problems.append(f"{rel}:{number}: names Family::{family} outside "
                                        f"core/arch/family_{family.lower()}.cpp")
    if problems:
        print("\n".join(problems))
        print(f"{len(problems)} use(s) of a family outside its own file: give the family a trait instead "
              "(ForwardTraits, DecoderLayout)")
        return 1
    print(f"{len(families)} families ({', '.join(families)}) each named only in their own file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
