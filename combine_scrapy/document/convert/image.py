"""Image metadata from the file's header: format, dimensions, mode, and the text some formats carry.

Pillow's ``Image.open`` reads the header only and never decodes the pixels,
so a huge or hostile image costs no memory here.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from PIL import Image, UnidentifiedImageError

# Text chunks worth keeping as metadata (PNG tEXt/iTXt keys, GIF comment, JPEG comment).
_TEXT_KEYS = ("title", "description", "comment", "author", "copyright", "software")


@dataclass
class ImageInfo:
    format: str
    width: int
    height: int
    mode: str
    text: dict[str, str] = field(default_factory=dict)


def image_info(body: bytes) -> ImageInfo | None:
    """The image's header facts, or None when the bytes are no image Pillow knows."""
    try:
        with Image.open(io.BytesIO(body)) as image:
            text = {}
            for key, value in image.info.items():  # not image.text: that decodes the pixels
                if isinstance(key, str) and key.lower() in _TEXT_KEYS:
                    if isinstance(value, bytes):
                        value = value.decode("utf-8", "replace")
                    if isinstance(value, str) and value.strip():
                        text[key.lower()] = value.strip()
            return ImageInfo(image.format or "", image.width, image.height, image.mode, text)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None
