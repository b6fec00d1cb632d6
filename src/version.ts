/** The package's version, for the OpenAPI document; test/unit/version.test.ts keeps it equal to package.json's. */
export const ENGINE_VERSION = "0.3.0"
