// MathUtil.h - small helpers shared by gameplay and animation code.
#pragma once

#include <cmath>

#include "Math/Vector3.h"

namespace math {

constexpr float kPi = 3.14159265358979323846f;
constexpr float kEpsilon = 1e-6f;

inline float DegToRad(float deg) { return deg * (kPi / 180.0f); }
inline float RadToDeg(float rad) { return rad * (180.0f / kPi); }

inline bool NearlyEqual(float a, float b, float eps = kEpsilon) {
    return std::fabs(a - b) <= eps;
}

inline float Lerp(float a, float b, float t) { return a + (b - a) * t; }

inline Vector3 Lerp(const Vector3& a, const Vector3& b, float t) {
    return Vector3{Lerp(a.x, b.x, t), Lerp(a.y, b.y, t), Lerp(a.z, b.z, t)};
}

}  // namespace math
