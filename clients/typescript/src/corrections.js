// Corrections carry `previous.value` and `current.value` beside `oldValue` / `newValue`
// (the spec's chat loop reads the former), as non-enumerable getters so the object still
// serialises as the wire sent it.

function decorate(correction) {
  if (!correction || typeof correction !== "object" || "previous" in correction) return correction;
  Object.defineProperty(correction, "previous", {
    get() { return { value: this.oldValue }; }, enumerable: false, configurable: true,
  });
  Object.defineProperty(correction, "current", {
    get() { return { value: this.newValue }; }, enumerable: false, configurable: true,
  });
  return correction;
}

function extraction(result) {
  if (result && Array.isArray(result.corrections)) result.corrections.forEach(decorate);
  return result;
}

/** Decorates the corrections of a write or chat response in place; returns it. */
export function withCorrections(body) {
  if (!body || typeof body !== "object") return body;
  if (Array.isArray(body.corrections)) extraction(body);  // a correction by id
  if (body.extraction) extraction(body.extraction);
  if (body.memoryUpdates) extraction(body.memoryUpdates);
  if (Array.isArray(body.extractions)) body.extractions.forEach(extraction);
  return body;
}
