import { genjobsNext } from "genjobs/http"
// A relative import: a bare App Router project has no "@/" path in its tsconfig.
import { basePath, engine } from "../../../../lib/engine"

export const { GET, POST, PUT, DELETE, PATCH, OPTIONS, HEAD } = genjobsNext(engine, { basePath })
