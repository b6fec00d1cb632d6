import { Schema } from "effect"
import { MAX_FAIR_WEIGHT } from "./fairShare.js"

/**
 * An account's weight in the fair order (src/domain/fairShare.ts): weight 2 starts two jobs for
 * each one of weight 1 while both have jobs waiting for the same capacity.
 */
export const FairShareWeight = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1), Schema.isLessThanOrEqualTo(MAX_FAIR_WEIGHT)).annotate({
  description: "The account's weight in the fair order of jobs waiting for the same capacity: 1 to 1000, default 1. " +
    "An account of weight 2 starts two jobs for each one of an account of weight 1 while both have jobs waiting."
})
