// TextureCache.h - decoded textures shared by the renderer, keyed by asset path.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "Render/Texture.h"

namespace render {

class TextureCache {
public:
    explicit TextureCache(AssetStore& store);
    ~TextureCache();

    // Returns the texture, decoding it on first use. Render thread only.
    std::shared_ptr<Texture> Get(const std::string& path);

    // Starts decoding paths on the loader thread so Get finds them ready.
    void Prefetch(const std::vector<std::string>& paths);

    void Clear();

private:
    std::shared_ptr<Texture> Load(const std::string& path);

    AssetStore& store_;
    std::unordered_map<std::string, std::shared_ptr<Texture>> textures_;
    std::mutex mu_;
};

}  // namespace render
