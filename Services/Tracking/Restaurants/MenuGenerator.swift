import Foundation
import ServiceKit

/// A menu item as restaurants serve it and orders price it.
struct MenuItem: Codable, Sendable, Equatable {
    var id: String
    var name: String
    var priceCents: Int
    var available: Bool
}

/// The menus of the seeded restaurants: 6–12 available dishes that fit the place's amenity and
/// cuisine, priced in whole tens of cents, the same every time for the same OpenStreetMap node.
enum MenuGenerator {
    static func menu(amenity: String, cuisine: String?, osmNode: Int64) -> [MenuItem] {
        var random = SeededRandom(state: UInt64(bitPattern: osmNode))
        let (dishes, priceRange) = dishes(amenity: amenity, cuisine: cuisine)
        let count = min(dishes.count, 6 + Int(random.next() % 7))
        var pool = dishes
        var menu: [MenuItem] = []
        for index in 0..<count {
            let dish = pool.remove(at: Int(random.next() % UInt64(pool.count)))
            let tens = priceRange.lowerBound / 10 + Int(random.next() % UInt64((priceRange.upperBound - priceRange.lowerBound) / 10 + 1))
            menu.append(MenuItem(id: "m\(index + 1)", name: dish, priceCents: tens * 10, available: true))
        }
        return menu
    }

    /// Dishes for a place and the price range (cents) they sell in.
    private static func dishes(amenity: String, cuisine: String?) -> ([String], ClosedRange<Int>) {
        let kind = (cuisine ?? "").split(separator: ";").first.map(String.init) ?? ""
        switch (amenity, kind) {
        case (_, "burger"), (_, "american"), (_, "hotdog"):
            return (
                [
                    "Cheeseburger", "Bacon burger", "Veggie burger", "Chicken burger", "Double smash burger", "Fries", "Sweet potato fries",
                    "Onion rings", "Milkshake", "Coleslaw", "Hot dog", "Chili cheese fries",
                ], 350...1590
            )
        case (_, "sushi"), (_, "japanese"), (_, "noodle"):
            return (
                [
                    "Salmon nigiri (8)", "Maki mix (12)", "California roll", "Sashimi plate", "Miso soup", "Gyoza (6)", "Chicken teriyaki",
                    "Tempura udon", "Edamame", "Seaweed salad", "Ramen", "Vegan sushi set",
                ], 390...2490
            )
        case (_, "pizza"), (_, "italian"):
            return (
                [
                    "Margherita", "Pepperoni pizza", "Quattro formaggi", "Pizza funghi", "Lasagne", "Spaghetti carbonara", "Penne arrabbiata",
                    "Risotto ai funghi", "Caesar salad", "Tiramisu", "Bruschetta", "Minestrone",
                ], 490...2190
            )
        case (_, "kebab"), (_, "turkish"):
            return (
                [
                    "Kebab plate", "Kebab in pita", "Falafel wrap", "Chicken kebab rice", "Halloumi plate", "Lahmacun", "Hummus", "Fries",
                    "Greek salad", "Baklava",
                ], 350...1490
            )
        case (_, "asian"), (_, "chinese"), (_, "thai"), (_, "vietnamese"), (_, "indian"), (_, "nepalese"):
            return (
                [
                    "Pad thai", "Green curry", "Chicken tikka masala", "Butter chicken", "Vegetable curry", "Spring rolls", "Pho",
                    "Fried rice", "Kung pao chicken", "Momo (8)", "Naan", "Mango lassi", "Sweet and sour pork",
                ], 390...1890
            )
        case (_, "mexican"), (_, "spanish"):
            return (
                [
                    "Tacos al pastor (3)", "Burrito", "Quesadilla", "Nachos", "Guacamole and chips", "Churros", "Patatas bravas",
                    "Tortilla española", "Paella", "Gambas al ajillo",
                ], 450...1990
            )
        case (_, "salad"), (_, "juice"), (_, "oraganic"), (_, "organic"):
            return (
                [
                    "Chicken salad", "Quinoa bowl", "Falafel bowl", "Salmon poke", "Green smoothie", "Berry smoothie", "Fresh orange juice",
                    "Avocado toast", "Soup of the day",
                ], 390...1590
            )
        case ("cafe", _), (_, "coffee_shop"), (_, "tee"), (_, "ice_cream"):
            return (
                [
                    "Cappuccino", "Caffè latte", "Espresso", "Filter coffee", "Tea", "Cinnamon bun", "Blueberry pie", "Croissant",
                    "Cheese sandwich", "Salmon sandwich", "Karelian pie", "Chocolate cake", "Hot chocolate",
                ], 250...990
            )
        case ("fast_food", _), (_, "sandwich"):
            return (
                [
                    "Club sandwich", "Chicken wrap", "Hot dog", "Fries", "Chicken nuggets (9)", "Falafel wrap", "Soft drink", "Cheeseburger",
                    "Salad box", "Loaded fries",
                ], 290...1290
            )
        default:
            // A restaurant with no cuisine given: Finnish and Nordic home cooking.
            return (
                [
                    "Salmon soup", "Meatballs with mashed potatoes", "Reindeer sauté", "Vendace with garlic mayo", "Pike-perch fillet",
                    "Mushroom risotto", "Beef tartare", "Cabbage rolls", "Lingonberry pancakes", "Rye bread and butter",
                    "Blueberry pie with vanilla sauce", "Beetroot salad",
                ], 490...3290
            )
        }
    }
}
