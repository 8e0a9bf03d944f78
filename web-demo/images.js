// A folder of images as calibration samples: each image resized to the model input (bilinear,
// by the browser's canvas), grayscale for one channel, values mapped to the chosen range, in the
// model's layout (NCHW or NHWC, read from the input shape).

/** The layout of an image input: `{layout, h, w, c}`, or an Error naming the shape. */
export function imageInput(shape) {
  if (shape.length !== 4 || shape[0] !== 1) {
    throw new Error(`the model input has shape [${shape.join(', ')}]: images need a [1, C, H, W] or [1, H, W, C] input`);
  }
  const nchw = (shape[1] === 1 || shape[1] === 3) && !(shape[3] === 1 || shape[3] === 3);
  const [c, h, w] = nchw ? [shape[1], shape[2], shape[3]] : [shape[3], shape[1], shape[2]];
  if (c !== 1 && c !== 3) throw new Error(`the model input has ${c} channels: images give 1 (gray) or 3 (RGB)`);
  return { layout: nchw ? 'NCHW' : 'NHWC', h, w, c };
}

/** Decodes and resizes `files` (File objects) into one Float32Array of samples back to back. */
export async function imagesToSamples(files, shape, [lo, hi]) {
  const { layout, h, w, c } = imageInput(shape);
  const images = [...files].filter((f) => f.type.startsWith('image/') || /\.(png|jpe?g|gif|bmp|webp)$/i.test(f.name));
  if (images.length === 0) throw new Error('the folder holds no images (png, jpeg, gif, bmp, webp)');
  const canvas = new OffscreenCanvas(w, h);
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  const per = h * w * c;
  const out = new Float32Array(images.length * per);
  for (const [k, file] of images.entries()) {
    let bitmap;
    try {
      bitmap = await createImageBitmap(file);
    } catch {
      throw new Error(`${file.name}: not an image the browser can decode`);
    }
    ctx.clearRect(0, 0, w, h);
    ctx.drawImage(bitmap, 0, 0, w, h);
    bitmap.close();
    const px = ctx.getImageData(0, 0, w, h).data;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const p = (y * w + x) * 4;
        const rgb = [px[p], px[p + 1], px[p + 2]];
        for (let ch = 0; ch < c; ch++) {
          const v = c === 1 ? 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] : rgb[ch];
          const i = layout === 'NCHW' ? ch * h * w + y * w + x : (y * w + x) * c + ch;
          out[k * per + i] = lo + (v / 255) * (hi - lo);
        }
      }
    }
  }
  return { samples: out, count: images.length, layout };
}
