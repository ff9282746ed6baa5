// Every openapi.yaml operation the client reaches: operationId -> [method, path, SDK method].
// The client builds each request from this table (so a path lives in one place), and
// test/operations.test.js checks it against openapi.yaml: every operationId is either here,
// with the same method and path, or in OMITTED with the reason.

export const OPERATIONS = Object.freeze({
  health: ["GET", "/api/v1/health", "health"],
  getOpenApiJson: ["GET", "/api/v1/openapi.json", "openapi"],
  listContexts: ["GET", "/api/v1/contexts", "contexts"],
  listSessions: ["GET", "/api/v1/{context_id}/sessions", "sessions.list"],
  createSession: ["POST", "/api/v1/{context_id}/sessions", "sessions.create"],
  deleteSession: ["DELETE", "/api/v1/{context_id}/sessions/{session_id}", "sessions.delete"],
  closeSession: ["POST", "/api/v1/{context_id}/sessions/{session_id}/close", "sessions.close"],
  listSessionTurns: ["GET", "/api/v1/{context_id}/sessions/{session_id}/turns", "sessions.turns"],
  sessionContext: ["POST", "/api/v1/{context_id}/sessions/{session_id}/context", "sessions.context"],
  writeFacts: ["POST", "/api/v1/{context_id}/facts", "remember"],
  writeFactsBatch: ["POST", "/api/v1/{context_id}/facts/batch", "rememberMany"],
  listThreads: ["GET", "/api/v1/{context_id}/threads", "threads.list"],
  getThread: ["GET", "/api/v1/{context_id}/threads/{thread_id}", "threads.get"],
  appendThreadTurn: ["POST", "/api/v1/{context_id}/threads/{thread_id}/turns", "threads.append"],
  listThreadTurns: ["GET", "/api/v1/{context_id}/threads/{thread_id}/turns", "threads.turns"],
  getThreadTurn: ["GET", "/api/v1/{context_id}/threads/{thread_id}/turns/{turn_index}", "threads.turn"],
  threadContext: ["POST", "/api/v1/{context_id}/threads/{thread_id}/context", "threads.context"],
  setThreadAcl: ["PUT", "/api/v1/{context_id}/threads/{thread_id}/acl", "threads.setAcl"],
  chat: ["POST", "/api/v1/{context_id}/chat", "chat"],
  listTraces: ["GET", "/api/v1/{context_id}/traces", "traces.list"],
  getTraceStats: ["GET", "/api/v1/{context_id}/traces/stats", "traces.stats"],
  getTrace: ["GET", "/api/v1/{context_id}/traces/{trace_id}", "traces.get"],
  getReceipt: ["GET", "/api/v1/{context_id}/receipts/{receipt_id}", "receipts.get"],
  verifyReceipt: ["POST", "/api/v1/{context_id}/receipts/{receipt_id}/verify", "receipts.verify"],
  listDocuments: ["GET", "/api/v1/{context_id}/documents", "documents.list"],
  uploadDocument: ["POST", "/api/v1/{context_id}/documents", "documents.upload"],
  createDocumentUpload: ["POST", "/api/v1/{context_id}/documents/uploads", "documents.createUpload"],
  completeDocumentUpload: ["POST", "/api/v1/{context_id}/documents/{document_id}/complete", "documents.completeUpload"],
  getDocument: ["GET", "/api/v1/{context_id}/documents/{document_id}", "documents.get"],
  deleteDocument: ["DELETE", "/api/v1/{context_id}/documents/{document_id}", "documents.delete"],
  reprocessDocument: ["PUT", "/api/v1/{context_id}/documents/{document_id}", "documents.reprocess"],
  recomputeDocumentLinks: ["POST", "/api/v1/{context_id}/documents/recompute-links", "documents.recomputeLinks"],
  listDocumentChunks: ["GET", "/api/v1/{context_id}/documents/{document_id}/chunks", "documents.chunks"],
  getDocumentRaw: ["GET", "/api/v1/{context_id}/documents/{document_id}/raw", "documents.fetchRaw"],
  queryDocuments: ["POST", "/api/v1/{context_id}/documents/query", "documents.query"],
  listDocumentKeywords: ["GET", "/api/v1/{context_id}/documents/keywords", "documents.keywords"],
  getDocumentKeyword: ["GET", "/api/v1/{context_id}/documents/keywords/{normalised}", "documents.keyword"],
  searchDocumentKeywords: ["POST", "/api/v1/{context_id}/documents/keywords/search", "documents.searchKeywords"],
  listKeywordsOfDocument: ["GET", "/api/v1/{context_id}/documents/{document_id}/keywords", "documents.documentKeywords"],
  getState: ["GET", "/api/v1/{context_id}/state", "state"],
  getProfile: ["GET", "/api/v1/{context_id}/profile", "profile"],
  listAudit: ["GET", "/api/v1/{context_id}/audit", "audit"],
  inspect: ["GET", "/api/v1/{context_id}/inspect", "inspect"],
  whoami: ["GET", "/api/v1/{context_id}/me", "whoami"],
  createKey: ["POST", "/api/v1/{context_id}/keys", "keys.create"],
  listKeys: ["GET", "/api/v1/{context_id}/keys", "keys.list"],
  rotateKey: ["POST", "/api/v1/{context_id}/keys/{key_name}/rotate", "keys.rotate"],
  deleteKey: ["DELETE", "/api/v1/{context_id}/keys/{key_name}", "keys.delete"],
  listPrincipals: ["GET", "/api/v1/{context_id}/principals", "principals.list"],
  getPrincipal: ["GET", "/api/v1/{context_id}/principals/{principal_id}", "principals.get"],
  grantPrincipal: ["POST", "/api/v1/{context_id}/principals/{principal_id}/grants", "principals.grant"],
  revokePrincipalGrant: ["DELETE", "/api/v1/{context_id}/principals/{principal_id}/grants", "principals.revoke"],
  getEffectiveGrants: ["GET", "/api/v1/{context_id}/principals/{principal_id}/effective", "principals.effective"],
  registerScope: ["POST", "/api/v1/{context_id}/scopes", "scopes.register"],
  listScopes: ["GET", "/api/v1/{context_id}/scopes", "scopes.list"],
  deleteScope: ["DELETE", "/api/v1/{context_id}/scopes", "scopes.delete"],
  forgetScope: ["POST", "/api/v1/{context_id}/scopes/forget", "scopes.forget"],
  exportContext: ["GET", "/api/v1/{context_id}/export", "exportContext"],
  importContext: ["POST", "/api/v1/{context_id}/import", "importContext"],
  startExportJob: ["POST", "/api/v1/{context_id}/export/jobs", "startExportJob"],
  getExportJob: ["GET", "/api/v1/{context_id}/export/jobs/{job_id}", "getExportJob"],
  createImportJob: ["POST", "/api/v1/{context_id}/import/jobs", "createImportJob"],
  startImportJob: ["POST", "/api/v1/{context_id}/import/jobs/{job_id}/start", "startImportJob"],
  getImportJob: ["GET", "/api/v1/{context_id}/import/jobs/{job_id}", "getImportJob"],
  listEntities: ["GET", "/api/v1/{context_id}/entities", "entities.list"],
  getEntity: ["GET", "/api/v1/{context_id}/entities/{type}/{name}", "entities.get"],
  deleteEntity: ["DELETE", "/api/v1/{context_id}/entities/{type}/{name}", "entities.delete"],
  listEntityHistory: ["GET", "/api/v1/{context_id}/entities/{type}/{name}/history", "entities.allHistory"],
  getAttributeHistory: ["GET", "/api/v1/{context_id}/entities/{type}/{name}/history/{key}", "entities.history"],
  listAttributes: ["GET", "/api/v1/{context_id}/attributes", "attributes.list"],
  listRelations: ["GET", "/api/v1/{context_id}/relations", "relations.list"],
  listActions: ["GET", "/api/v1/{context_id}/actions", "actions.list"],
  listInstructions: ["GET", "/api/v1/{context_id}/instructions", "instructions.list"],
  listUncertainty: ["GET", "/api/v1/{context_id}/uncertainty", "uncertainty.list"],
  getAttribute: ["GET", "/api/v1/{context_id}/attributes/{fact_id}", "attributes.get"],
  correctAttribute: ["PATCH", "/api/v1/{context_id}/attributes/{fact_id}", "attributes.update"],
  deleteAttribute: ["DELETE", "/api/v1/{context_id}/attributes/{fact_id}", "attributes.delete"],
  getRelation: ["GET", "/api/v1/{context_id}/relations/{fact_id}", "relations.get"],
  correctRelation: ["PATCH", "/api/v1/{context_id}/relations/{fact_id}", "relations.update"],
  deleteRelation: ["DELETE", "/api/v1/{context_id}/relations/{fact_id}", "relations.delete"],
  getAction: ["GET", "/api/v1/{context_id}/actions/{fact_id}", "actions.get"],
  deleteAction: ["DELETE", "/api/v1/{context_id}/actions/{fact_id}", "actions.delete"],
  getInstruction: ["GET", "/api/v1/{context_id}/instructions/{fact_id}", "instructions.get"],
  deleteInstruction: ["DELETE", "/api/v1/{context_id}/instructions/{fact_id}", "instructions.delete"],
  resolveUncertainty: ["POST", "/api/v1/{context_id}/uncertainty/{uncertainty_id}/resolve", "uncertainty.resolve"],
  forget: ["POST", "/api/v1/{context_id}/forget", "forget"],
  consolidate: ["POST", "/api/v1/{context_id}/consolidate", "consolidate"],
  reflect: ["POST", "/api/v1/{context_id}/reflect", "reflect"],
  elaborate: ["POST", "/api/v1/{context_id}/elaborate", "elaborate"],
  lifecycleDecay: ["POST", "/api/v1/{context_id}/lifecycle/decay", "decay"],
  lifecycleExpire: ["POST", "/api/v1/{context_id}/lifecycle/expire", "expire"],
  fsck: ["POST", "/api/v1/{context_id}/fsck", "fsck"],
  query: ["POST", "/api/v1/{context_id}/query", "recall"],
  recallContext: ["POST", "/api/v1/{context_id}/context", "context"],
});

/** Operations deliberately without a client method, each with its reason. */
export const OMITTED = Object.freeze({
  mcp: "an MCP host speaks JSON-RPC to it with its own MCP client; mcpUrl() gives the URL to register",
  getOpenApiYaml: "the same document as openapi() (getOpenApiJson), as YAML text for tools that read YAML",
});

/** The request path of an operation, its `{placeholders}` filled in and escaped. */
export function operationPath(operationId, params) {
  const entry = OPERATIONS[operationId];
  if (!entry) throw new Error(`unknown operation ${operationId}`);
  return entry[1].replace(/\{([a-z_]+)\}/g, (_, name) => {
    const value = params[name];
    if (value === undefined || value === null || value === "") {
      throw new TypeError(`${operationId}: ${name} is required`);
    }
    // Thread ids may hold ':' (as the Python SDK leaves it unescaped).
    const escaped = encodeURIComponent(String(value));
    return name === "thread_id" ? escaped.replace(/%3A/gi, ":") : escaped;
  });
}
