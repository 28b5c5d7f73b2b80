// Runs _static/live/usaav_live.mjs on the cases of tests/test_live_module.py: reads
// {"cases": [{"call": "simulate" | "defaultDt" | "bookDt", "opts": {...}}]} from the file named
// by the first argument and prints one result per case, {"value": ...} or {"error": message}.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [casesPath, modulePath] = process.argv.slice(2);
const live = await import(pathToFileURL(modulePath).href);
const { cases } = JSON.parse(readFileSync(casesPath, "utf8"));
const results = cases.map(({ call, opts }) => {
  try {
    return { value: live[call](opts) };
  } catch (err) {
    return { error: String(err.message) };
  }
});
process.stdout.write(JSON.stringify({ results }));
