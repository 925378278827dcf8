// orval's configuration for the examples: fetch functions from the served
// document (generated/openapi.json), calling the server at CAMP_URL.
module.exports = {
  camp: {
    input: "./generated/openapi.json",
    output: { target: "./generated/orval/api.ts", client: "fetch", baseUrl: process.env.CAMP_URL ?? "http://localhost:8000" },
  },
};
