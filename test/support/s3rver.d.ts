/** The slice of s3rver's API the tests use (the package ships no types). */
declare module "s3rver" {
  export default class S3rver {
    constructor(options: { port: number; address: string; silent: boolean; directory: string })
    run(): Promise<{ port: number }>
    close(): Promise<void>
  }
}
