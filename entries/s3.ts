/** Files in an S3-compatible bucket with presigned uploads. Needs `@aws-sdk/client-s3` and `@aws-sdk/s3-request-presigner`. */
export { s3Files, type S3FilesOptions, s3PublicUrl } from "../adapters/blob/s3Files.js"
export { layerS3BlobStore, makeS3BlobStore, type S3Location } from "../adapters/blob/S3BlobStore.js"
export { layerS3UploadTarget } from "../adapters/blob/S3UploadTarget.js"
