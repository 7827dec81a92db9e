// Reference tokenizations from an independent implementation (@lenml/tokenizers, a port of transformers.js).
// usage: node tokenize_reference.js PACKAGE TEXTS.json OUT.json
//   writes {"plain": [[ids]...], "special": [[ids]...]} for add_special_tokens false and true.
const fs = require("fs");
const [pkg, textsPath, outPath] = process.argv.slice(2);
const { fromPreTrained } = require(pkg);
const tokenizer = fromPreTrained();
const texts = JSON.parse(fs.readFileSync(textsPath, "utf8"));
const plain = texts.map((t) => Array.from(tokenizer.encode(t, { add_special_tokens: false })));
const special = texts.map((t) => Array.from(tokenizer.encode(t, { add_special_tokens: true })));
fs.writeFileSync(outPath, JSON.stringify({ plain, special }));
