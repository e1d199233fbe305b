// GE private device layouts (FRACTAL_NZ, NC1HWC0, FRACTAL_Z, NHWC) back to the
// logical layout the FX golden uses, with the padding sliced off.
//
// Index math (x = stored elements, shapes from the dump header):
//   FRACTAL_NZ -> ND:   stored [..., C1, No, Ni, C0], original [..., N, C]
//     out[h][n][c] = x[h][c / C0][n / Ni][n % Ni][c % C0]      (h = flattened leading dims)
//   NC1HWC0 -> NCHW:    stored [N, C1, H, W, C0], original [N, C, H, W]
//     out[n][c][h][w] = x[n][c / C0][h][w][c % C0]
//   FRACTAL_Z -> NCHW:  stored [C1*H*W, No, Ni, C0], original [N, C, H, W]
//     out[n][c][h][w] = x[c / C0][h][w][n / Ni][n % Ni][c % C0]
//   NHWC -> NCHW:       stored [N, H, W, C]
//     out[n][c][h][w] = x[n][h][w][c]
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compare/tensor.h"

namespace diagnose::compare {

// GE OutputFormat name ("FRACTAL_NZ"), or "format {n}" for numbers it does not know.
std::string ge_format_name(int format);

// Formats whose bytes are already in logical row-major order (ND, NCHW, NC...).
bool is_plain_format(int format);

// The logical shape a tensor stored as `stored` in `format` converts to, given the
// dump's original_shape. nullopt with *reason when no conversion applies.
std::optional<Shape> plan_logical_shape(int format, const Shape& stored, const Shape& original, std::string* reason);

// Reorders `in` (stored elements, row-major in `stored`) into `out` in `logical`
// order. `logical` must be what plan_logical_shape gives for these shapes.
template <typename T>
bool convert_to_logical(int format, const Shape& stored, const Shape& logical, const std::vector<T>& in,
                        std::vector<T>* out, std::string* error);

}  // namespace diagnose::compare
