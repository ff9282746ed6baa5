// The document this server serves, shown by Swagger UI. validatorUrl null: by default the page
// would load a badge from validator.swagger.io, and this page makes no request off its origin.
window.ui = SwaggerUIBundle({
  url: "./openapi.json",
  dom_id: "#reference",
  deepLinking: true,
  validatorUrl: null,
});
