"""The image record schema: the feature key of each field of a course image record.

Shared by :mod:`helpers.convert` (the writer, which records it in the manifest) and
:mod:`helpers.pipeline` (the reader). Keys follow the ImageNet conversion scripts.
It lives in a module of its own, with no imports, so a process that only needs the
keys (the converter writing its manifest) does not load NumPy or protobuf for them;
:mod:`helpers.features` re-exports it.
"""

__all__ = ["IMAGE_KEYS"]

IMAGE_KEYS = {
    "encoded": "image/encoded",  # bytes: the image file's bytes, as stored on disk
    "format": "image/format",  # bytes: b"jpeg" or b"png" (detected from content)
    "label": "image/class/label",  # int64 in [0, num_classes)
    "text": "image/class/text",  # bytes: the class folder name
    "filename": "image/filename",  # bytes: path relative to the dataset root (UTF-8)
    "height": "image/height",  # int64
    "width": "image/width",  # int64
}
