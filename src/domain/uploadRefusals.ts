import { Refusal } from "./refusal.js"

// What presigning and receiving an upload refuses.

/** The content type is not one uploads take, or not the one the upload URL was signed for. */
export class InvalidContentType extends Refusal<InvalidContentType>()("InvalidContentType", { code: "INVALID_CONTENT_TYPE", status: 400 }) {}

/** The file is larger than its content type (or its upload URL) allows. */
export class FileTooLarge extends Refusal<FileTooLarge>()("FileTooLarge", { code: "FILE_TOO_LARGE", status: 413 }) {}

/** The upload URL is not one the API issued, or was altered. */
export class UploadUrlInvalid extends Refusal<UploadUrlInvalid>()("UploadUrlInvalid", { code: "UPLOAD_URL_INVALID", status: 403 }) {}

/** The upload URL (or the upload) has expired. */
export class UploadUrlExpired extends Refusal<UploadUrlExpired>()("UploadUrlExpired", { code: "UPLOAD_URL_EXPIRED", status: 403 }) {}

/** The upload URL was already used. */
export class UploadAlreadyReceived extends Refusal<UploadAlreadyReceived>()("UploadAlreadyReceived", {
  code: "UPLOAD_ALREADY_RECEIVED",
  status: 409
}) {}

/** The file was sent without a Content-Length. */
export class LengthRequired extends Refusal<LengthRequired>()("LengthRequired", { code: "LENGTH_REQUIRED", status: 411 }) {}
