/** The service version reported by /health and the OpenAPI document. */
export const VERSION = "0.1.0";
