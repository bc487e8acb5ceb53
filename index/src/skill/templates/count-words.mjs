#!/usr/bin/env node
// count-words: count the words and characters of a text.
//
// Reads one JSON object on stdin (the tool's `input_schema` in SKILL.md) and
// writes one JSON object on stdout (its `output_schema`). On bad input it
// writes an error object instead and exits with status 1.

function countWords(args) {
  if (typeof args !== "object" || args === null || typeof args.text !== "string") {
    throw new TypeError("the input must be an object with a string `text`");
  }
  const text = args.text;
  return {
    words: text.split(/\s+/).filter((word) => word.length > 0).length,
    characters: [...text].length,
  };
}

let input = "";
process.stdin.setEncoding("utf8");
for await (const chunk of process.stdin) {
  input += chunk;
}
try {
  console.log(JSON.stringify(countWords(JSON.parse(input))));
} catch (error) {
  const failure = { code: "INVALID_ARGUMENT", message: error.message, retriable: false };
  console.log(JSON.stringify({ status: "error", error: failure }));
  process.exitCode = 1;
}
