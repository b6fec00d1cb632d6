import { Context, Effect, Layer } from "effect"
import { layerSignedUploadTarget } from "../../adapters/blob/SignedUploadTarget.js"
import type { layerMemoryStores } from "../../adapters/memory/layer.js"
import { makeMemoryBlobStore } from "../../adapters/memory/MemoryBlobStore.js"
import { StoreError } from "../../src/domain/errors.js"
import { BlobStore } from "../../src/ports/BlobStore.js"
import { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"

/** The store operations on a worker's path that a test can make fail, each named for its step. */
export const storeSteps = ["catalog read", "claim", "lease renewal", "provider-state write", "output storage", "settlement"] as const
export type StoreStep = typeof storeSteps[number]

const perStep = () => Object.fromEntries(storeSteps.map((step) => [step, 0])) as Record<StoreStep, number>

/**
 * A switchboard of store faults: `fail(step, n)` makes the step's next `n` calls fail with a
 * StoreError before they reach the store (nothing written), as a database that is down, locked
 * past its timeout or failing over answers. Counts what failed and what went through.
 */
export const makeStoreFaults = () => {
  const left = perStep()
  const failed = perStep()
  const passed = perStep()
  const faults = {
    failed,
    passed,
    fail: (step: StoreStep, count: number) => void (left[step] = count),
    /** Called after each claim that took jobs, before its answer returns: a test's hook between a claim and the run. */
    afterClaim: (): void => {},
    /** `effect` as the step's operation: failed while the step has faults left. */
    faulty: <A, E>(step: StoreStep, effect: Effect.Effect<A, E>): Effect.Effect<A, E | StoreError> =>
      Effect.suspend((): Effect.Effect<A, E | StoreError> => {
        if (left[step] > 0) {
          left[step]--
          failed[step]++
          return Effect.fail(new StoreError({ message: `injected store fault: ${step}` }))
        }
        return Effect.tap(effect, Effect.sync(() => void passed[step]++))
      })
  }
  return faults
}
export type StoreFaults = ReturnType<typeof makeStoreFaults>

type Stores = Layer.Success<typeof layerMemoryStores>

/** The given stores with `faults` in front of the worker's operations on them (JobRepo, CatalogRepo). */
export const storesWithFaults = <E>(stores: Layer.Layer<Stores, E>, faults: StoreFaults): Layer.Layer<Stores, E> =>
  Layer.flatMap(stores, (context) => {
    const repo = Context.get(context, JobRepo)
    const catalog = Context.get(context, CatalogRepo)
    const { faulty } = faults
    return Layer.succeedContext(context.pipe(
      Context.add(JobRepo, {
        ...repo,
        claimBatch: (options) =>
          faulty("claim", repo.claimBatch(options)).pipe(Effect.tap((jobs) => (jobs.length > 0 ? Effect.sync(() => faults.afterClaim()) : Effect.void))),
        claimIds: (ids, options) => faulty("claim", repo.claimIds(ids, options)),
        renewLeases: (leases, now, leaseMs) => faulty("lease renewal", repo.renewLeases(leases, now, leaseMs)),
        saveProviderState: (id, workerId, state) => faulty("provider-state write", repo.saveProviderState(id, workerId, state)),
        complete: (id, workerId, outputs, now, route) => faulty("settlement", repo.complete(id, workerId, outputs, now, route)),
        fail: (id, workerId, error, now, route) => faulty("settlement", repo.fail(id, workerId, error, now, route))
      }),
      Context.add(CatalogRepo, {
        ...catalog,
        load: faulty("catalog read", catalog.load),
        revision: faulty("catalog read", catalog.revision)
      })
    ))
  })

/** Files in memory whose writes go through `faults` ("output storage"), behind signed upload URLs. */
export const filesWithFaults = (faults: StoreFaults) => {
  const store = makeMemoryBlobStore("http://files.test/files")
  return Layer.merge(
    Layer.succeed(BlobStore, BlobStore.of({
      ...store,
      putStream: (key, contentType, body) => faults.faulty("output storage", store.putStream(key, contentType, body))
    })),
    layerSignedUploadTarget({ publicUrl: "http://files.test", secret: "test-upload-secret" })
  )
}
