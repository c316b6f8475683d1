-- tween.lua - small tweening helper for UI widgets.

local Tween = {}
Tween.__index = Tween

local easings = {
    linear = function(t) return t end,
    inQuad = function(t) return t * t end,
    outQuad = function(t) return t * (2 - t) end,
}

function Tween.new(target, field, to, duration, easing)
    local self = setmetatable({}, Tween)
    self.target = target
    self.field = field
    self.from = target[field]
    self.to = to
    self.duration = duration
    self.elapsed = 0
    self.ease = easings[easing or "linear"] or easings.linear
    self.done = false
    return self
end

function Tween:update(dt)
    if self.done then
        return true
    end
    self.elapsed = self.elapsed + dt
    local t = self.elapsed / self.duration
    if t >= 1 then
        t = 1
        self.done = true
    end
    self.target[self.field] = self.from + (self.to - self.from) * self.ease(t)
    return self.done
end

return Tween
