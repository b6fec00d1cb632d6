/**
 * The engine inside your own server, from the package's public entry points only: one settings
 * object makes the engine; its `fetch` answers the API under the path you mount it at.
 * docs/embedding.md walks through it; test/e2e/embedded.test.ts runs it.
 */
import { DEMO_PROVIDER_ID, demoCatalog, localFiles, makeDemoProvider, makeEngine } from "genjobs"
import { sqliteStore } from "genjobs/sqlite"

export interface EmbeddedOptions {
  /** Where the SQLite file and the stored files live. */
  readonly dataDir: string
  /** The URL the engine answers at, base path included: upload and file URLs are built on it. */
  readonly publicUrl: string
  /** The path your server mounts the engine under, such as "/api/genjobs". */
  readonly basePath: string
  readonly adminToken: string
  /** Signs upload URLs: the same value in every process of the deployment. */
  readonly uploadSecret: string
}

export const makeEmbeddedEngine = (options: EmbeddedOptions) =>
  makeEngine({
    store: sqliteStore({ filename: `${options.dataDir}/genjobs.db` }),
    files: localFiles({ dir: `${options.dataDir}/files`, publicUrl: options.publicUrl, uploadSecret: options.uploadSecret }),
    providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
    catalog: demoCatalog,                                  // the models clients may submit; yours in its place
    http: { adminToken: options.adminToken },
    basePath: options.basePath
  })
